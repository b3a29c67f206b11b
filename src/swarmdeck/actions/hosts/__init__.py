"""Where a job can run, behind one interface: fits / submit / follow / stop / fetch."""
