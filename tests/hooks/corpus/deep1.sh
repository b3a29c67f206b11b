bash deep2.sh
