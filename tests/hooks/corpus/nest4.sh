bash nest5.sh
