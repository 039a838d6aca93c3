cp /tmp/vt/par/par /tmp/par
/tmp/par; /tmp/par 2; /tmp/par; /tmp/par 2
