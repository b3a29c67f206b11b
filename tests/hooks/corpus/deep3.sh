make -j8 check
