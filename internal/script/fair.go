package script

// Fair holds the scripts of package fair: a FIFO family with one permit.
var Fair = newFIFO("fair")
