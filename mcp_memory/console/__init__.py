"""The review console: server-rendered pages under /ui to see, search and curate memories in a
browser, on the service layer with the signed-in principal. HTTP only; no SQL here."""
