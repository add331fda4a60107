//! Lenient parsing for values a live service sends in more than one shape.
