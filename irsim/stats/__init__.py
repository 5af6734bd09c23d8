"""irsim.stats"""
