"""optimizer stage of lazysparse."""
