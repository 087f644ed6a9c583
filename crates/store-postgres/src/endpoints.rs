//! Where jobs are sent, on PostgreSQL: webhook endpoints and HTTP call targets, their secrets
//! sealed at rest when the store has a sealer.

use crate::PostgresStore;
use crate::rows::PgRun;
use async_trait::async_trait;
use kairos_store::sql::endpoints;
use kairos_store::*;

#[async_trait]
impl EndpointStore for PostgresStore {
    async fn endpoint_upsert(&self, p: EndpointUpsert) -> Result<Endpoint> {
        endpoints::endpoint_upsert(&mut PgRun::Pool(&self.pool), self.sealer(), p).await
    }

    async fn endpoint_get(&self, id: &str) -> Result<Option<Endpoint>> {
        endpoints::endpoint_get(&mut PgRun::Pool(&self.pool), self.sealer(), id).await
    }

    async fn endpoint_list(&self, p: EndpointList) -> Result<Vec<Endpoint>> {
        endpoints::endpoint_list(&mut PgRun::Pool(&self.pool), self.sealer(), p).await
    }

    async fn endpoint_disable(&self, p: EndpointDisable) -> Result<()> {
        endpoints::endpoint_disable(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn endpoint_enable(&self, p: EndpointEnable) -> Result<Option<Endpoint>> {
        endpoints::endpoint_enable(&mut PgRun::Pool(&self.pool), self.sealer(), p).await
    }

    async fn endpoint_failure_record(&self, p: EndpointFailureRecord) -> Result<()> {
        endpoints::endpoint_failure_record(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn http_target_upsert(&self, p: HttpTargetUpsert) -> Result<HttpTarget> {
        endpoints::http_target_upsert(&mut PgRun::Pool(&self.pool), self.sealer(), p).await
    }

    async fn http_target_get(&self, id: &str) -> Result<Option<HttpTarget>> {
        endpoints::http_target_get(&mut PgRun::Pool(&self.pool), self.sealer(), id).await
    }
}
