"""kernels stage of lazysparse."""
