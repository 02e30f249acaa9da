"""plugins"""
