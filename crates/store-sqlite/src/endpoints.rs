//! Where jobs are sent, on SQLite: webhook endpoints and HTTP call targets, their secrets
//! sealed at rest when the store has a sealer.

use crate::SqliteStore;
use crate::rows::SqRun;
use async_trait::async_trait;
use kairos_store::sql::endpoints;
use kairos_store::*;

#[async_trait]
impl EndpointStore for SqliteStore {
    async fn endpoint_upsert(&self, p: EndpointUpsert) -> Result<Endpoint> {
        endpoints::endpoint_upsert(&mut SqRun::Pool(&self.write), self.sealer(), p).await
    }

    async fn endpoint_get(&self, id: &str) -> Result<Option<Endpoint>> {
        endpoints::endpoint_get(&mut SqRun::Pool(&self.read), self.sealer(), id).await
    }

    async fn endpoint_list(&self, p: EndpointList) -> Result<Vec<Endpoint>> {
        endpoints::endpoint_list(&mut SqRun::Pool(&self.read), self.sealer(), p).await
    }

    async fn endpoint_disable(&self, p: EndpointDisable) -> Result<()> {
        endpoints::endpoint_disable(&mut SqRun::Pool(&self.write), p).await
    }

    async fn endpoint_enable(&self, p: EndpointEnable) -> Result<Option<Endpoint>> {
        endpoints::endpoint_enable(&mut SqRun::Pool(&self.write), self.sealer(), p).await
    }

    async fn endpoint_failure_record(&self, p: EndpointFailureRecord) -> Result<()> {
        endpoints::endpoint_failure_record(&mut SqRun::Pool(&self.write), p).await
    }

    async fn http_target_upsert(&self, p: HttpTargetUpsert) -> Result<HttpTarget> {
        endpoints::http_target_upsert(&mut SqRun::Pool(&self.write), self.sealer(), p).await
    }

    async fn http_target_get(&self, id: &str) -> Result<Option<HttpTarget>> {
        endpoints::http_target_get(&mut SqRun::Pool(&self.read), self.sealer(), id).await
    }
}
