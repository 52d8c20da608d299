"""formats stage of lazysparse."""
