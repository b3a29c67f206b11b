bash verify.sh
