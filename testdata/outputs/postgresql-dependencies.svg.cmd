cat /usr/share/doc/postgresql-common/dependencies.svg   # package postgresql-common
