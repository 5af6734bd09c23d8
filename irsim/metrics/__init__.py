"""irsim.metrics"""
