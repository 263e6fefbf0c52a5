"""Template plugin: one paper's components, registered through entry points."""
