bash nest4.sh
