"""One module per page (or small family of pages); each exposes `routes(console)`."""
