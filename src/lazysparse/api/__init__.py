"""api stage of lazysparse."""
