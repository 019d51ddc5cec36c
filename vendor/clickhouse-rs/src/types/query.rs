#[derive(Clone, Debug)]
pub struct Query {
    sql: String,
    id: String,
    /// traceingest patch: settings for this query only, sent after the connection's own.
    settings: Vec<(String, String)>,
}

impl Query {
    pub fn new(sql: impl AsRef<str>) -> Self {
        Self {
            sql: sql.as_ref().to_string(),
            id: "".to_string(),
            settings: Vec::new(),
        }
    }

    /// traceingest patch: a setting for this query only (e.g. an insert's
    /// `insert_deduplication_token`), sent as the server's string form of its value and marked
    /// important, so that a server that does not know it refuses the query instead of ignoring
    /// it. Needs a server that takes settings as strings (revision 54429, 19.x); an older one
    /// gets an error before anything is sent.
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
        self
    }

    pub(crate) fn get_settings(&self) -> &[(String, String)] {
        &self.settings
    }

    pub fn id(self, id: impl AsRef<str>) -> Self {
        Self {
            id: id.as_ref().to_string(),
            ..self
        }
    }

    pub(crate) fn get_sql(&self) -> &str {
        &self.sql
    }

    pub(crate) fn get_id(&self) -> &str {
        &self.id
    }

    pub(crate) fn map_sql<F>(self, f: F) -> Self
    where
        F: Fn(&str) -> String,
    {
        Self {
            sql: f(&self.sql),
            ..self
        }
    }
}

impl<T> From<T> for Query
where
    T: AsRef<str>,
{
    fn from(source: T) -> Self {
        Self::new(source)
    }
}
