"""Showing findings: text, JSON, HTML, DOT. Renderers are pure functions of findings."""
