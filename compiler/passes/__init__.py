"""The compiler's passes, one file each: every pass is a function ``Module -> Module``."""
