zcat /usr/share/doc/git/changelog.Debian.gz
