openssl ciphers -v
