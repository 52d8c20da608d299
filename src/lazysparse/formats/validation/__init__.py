"""Checks of user input and of tensors' levels, with errors that name the problem."""
