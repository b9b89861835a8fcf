cat /usr/share/zoneinfo/zone1970.tab
