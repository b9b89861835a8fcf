zcat /usr/share/man/man1/tar.1.gz | groff -Thtml -man   # groff 1.22.4 (apt-get install groff)
