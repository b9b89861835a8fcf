cat /usr/share/perl/5.36.0/CPAN/Kwalify/distroprefs.yml   # package perl-modules-5.36: anchors and aliases
