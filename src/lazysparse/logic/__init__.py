"""logic stage of lazysparse."""
