echo "preparing"
. ./verify.sh
