"""Applications built on the services: they may import services/ and libs/ (libs/ never imports them)."""
