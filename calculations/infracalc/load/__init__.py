"""Parsing and validation: config JSON -> Architecture, device JSON -> Device."""
