"""Lua scripts, kept as .lua files and loaded by `shared.lua`."""
