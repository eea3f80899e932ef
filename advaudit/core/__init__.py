"""the bottom layer: run records, progress, plots, intervals; imports nothing from advaudit but advaudit.errors/confutil"""
