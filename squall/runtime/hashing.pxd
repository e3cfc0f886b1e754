# C declarations for the compiled hot path (scripts/compile.py); hashing.py is the source.

cpdef object stable_hash(object value)
cpdef object hash_values(object values)
