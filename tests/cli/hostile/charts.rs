//! Charts written to hurt: values files, archives, dependencies.
