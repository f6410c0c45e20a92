package script

// Semaphore holds the scripts of package semaphore: a FIFO family with n
// permits.
var Semaphore = newFIFO("semaphore")
