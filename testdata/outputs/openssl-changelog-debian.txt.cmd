zcat /usr/share/doc/openssl/changelog.Debian.gz | head -n 150   # trimmed to its first 150 lines
