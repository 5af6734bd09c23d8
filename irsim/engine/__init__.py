"""irsim.engine"""
