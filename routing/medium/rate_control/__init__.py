"""Rate control of the medium's stations: the fixed rate and Minstrel (minstrel)."""
