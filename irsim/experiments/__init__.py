"""irsim.experiments"""
