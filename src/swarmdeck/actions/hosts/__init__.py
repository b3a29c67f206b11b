"""Where a job can run: this host, a peer over ssh, a cluster; one interface in base.py."""
