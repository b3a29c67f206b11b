bash loop.sh
