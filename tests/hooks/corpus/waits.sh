while ! test -f done; do sleep 5; done
