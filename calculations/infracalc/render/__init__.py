"""Result records -> text. Rendering formats; it never computes."""
