bash nest3.sh
