sh deep3.sh
