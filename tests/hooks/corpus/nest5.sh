bash nest6.sh
