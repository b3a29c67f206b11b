bash nest2.sh
