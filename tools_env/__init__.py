"""tools_env"""
