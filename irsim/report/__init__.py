"""irsim.report"""
