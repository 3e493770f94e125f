"""Look-ups in the user's live frames and files at report time: names, owners, holders, source."""
