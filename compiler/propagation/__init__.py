"""Stage 2, propagation: give every value of the traced module a sharding (Shardy-style factor
propagation with pluggable strategies) and record where each axis came from."""
