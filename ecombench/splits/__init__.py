"""Split versions on disk: publishing one (files, manifest, reports) and reading, inspecting and comparing them."""
