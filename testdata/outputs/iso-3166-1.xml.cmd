cat /usr/share/xml/iso-codes/iso_3166-1.xml   # package iso-codes
