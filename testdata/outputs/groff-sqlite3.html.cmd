zcat /usr/share/man/man1/sqlite3.1.gz | groff -Thtml -man   # groff 1.22.4 (apt-get install groff)
