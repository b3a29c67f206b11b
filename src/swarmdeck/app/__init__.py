"""The Textual control room: screens, panels and modals over the probes; no probing of its own."""
